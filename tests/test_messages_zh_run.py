"""A Chinese learner gets Chinese messages from course_lib's parallel, migrate, run, lab and perf packages (issue 26,
item 5): the text comes from the one catalog (course_lib/locale/zh/LC_MESSAGES/course_lib.po) with the values filled
in; English stays as it was; other libraries' text (MindSpore, MindData) is never translated."""
import string
import sys
import warnings
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

import course_lib
from course_lib import i18n
from course_lib.i18n import set_language
from course_lib.lab import diagrams, plotting
from course_lib.lab.lesson import show_error
from course_lib.lab.results import run_seconds, run_time
from course_lib.migrate.torch_resnet import build_torch_resnet
from course_lib.parallel.launch import launch
from course_lib.parallel.worker import msrun_role, parse_worker_report
from course_lib.perf.profiling import format_op_table
from course_lib.perf.timing import time_step_in_subprocess
from course_lib.run import cli
from course_lib.run.config import Config, load_config
from course_lib.run.env import init_env
from course_lib.run.factory import check_classification_config

ROOT = Path(__file__).resolve().parent.parent
WORKER = ROOT / "scripts" / "distributed_worker.py"
#: The packages whose messages this file covers (course_lib/__init__.py too).
PACKAGES = ("course_lib/parallel/", "course_lib/migrate/", "course_lib/run/", "course_lib/lab/", "course_lib/perf/",
            "course_lib/__init__.py")


@pytest.fixture
def zh():
    set_language("zh")
    yield
    set_language(None)


def test_launch_argument_errors_are_chinese(zh):
    with pytest.raises(TypeError) as caught:
        launch(WORKER, echo="yes")
    assert str(caught.value) == "echo 必须是 True 或 False，得到的是 'yes'。"
    with pytest.raises(TypeError, match=r"^args 必须是命令行参数的列表，得到的是 '--steps 4'。修正："):
        launch(WORKER, args="--steps 4")
    # the sentence around the fix is course_lib.validation's wording; the fix itself is launch's
    with pytest.raises(ValueError, match=r"(Fix: |修正：)传入要启动的进程数，例如 2（一台机器上最多 16 个）"):
        launch(WORKER, worker_num=0)


def test_worker_reports_and_leftover_warning_are_chinese(zh):
    with pytest.raises(TypeError) as caught:
        parse_worker_report(b"x")
    assert str(caught.value) == "log_text 必须是 worker 日志的文本（str），得到的是 bytes。"
    environ = {"MS_ROLE": "MS_WORKER", "MS_SCHED_HOST": "127.0.0.1", "MS_SCHED_PORT": "1", "MS_WORKER_NUM": "2"}
    with pytest.warns(RuntimeWarning, match=r"msrun 的环境变量已设置（.*MS_ROLE=MS_WORKER.*127\.0\.0\.1:1 上也没有调度"
                                            r"节点应答.*修正：在这个 shell 中运行 `unset MS_ROLE"):
        assert msrun_role(environ) is None


def test_config_errors_are_chinese_with_the_key_and_value(zh):
    with pytest.raises(TypeError) as caught:
        load_config(epochs="three")
    assert str(caught.value) == ("配置键 'epochs' 必须与默认值 5 一样是 int，得到的是 'three'（str）"
                                 "（来自 关键字参数覆盖）。请修改 YAML 中的值或覆盖它。")
    with pytest.raises(ValueError, match=r"^未知的配置键 \['batchsize'\]（来自 关键字参数覆盖）。"
                                         r"已知的键：.*修正：检查拼写"):
        load_config(batchsize=3)
    with pytest.raises(ValueError, match=r"^配置键 'context_mode' 必须是 \['graph', 'pynative'\] 之一，"
                                         r"得到的是 'grpah'"):
        load_config(argv=["--context_mode", "grpah"])
    with pytest.raises(ValueError, match=r"^意外的命令行参数 'epochs'"):
        load_config(argv=["epochs", "3"])


def test_run_environment_and_factory_errors_are_chinese(zh):
    with pytest.raises(TypeError, match=r"^init_env 接受已加载的配置，而不是文件路径：得到的是 'my\.yaml'。修正："
                                        r"init_env\(load_config\('my\.yaml'\)\)。$"):
        init_env("my.yaml")
    cfg = Config({**load_config().to_dict(), "dataset": "shapes"})
    with pytest.raises(ValueError, match=r"^分类任务的 dataset 必须是 \('digits_mnist', 'imagefolder'\) 之一，得到的是 "
                                         r"'shapes'。修正："):
        check_classification_config(cfg)


def test_script_boundary_speaks_chinese_but_keeps_mindspore_text(zh, capsys):
    mindspore_text = ("Exception thrown from dataset pipeline. Refer to 'Dataset Pipeline Error Message'.\n"
                      "- Dataset Pipeline Error Message:\n[ERROR] map operation: [Decode] failed. The corresponding "
                      "data file is: /data/bad.png. Invalid image.\n- C++ Call Stack:\nfoo")
    described = cli.describe_pipeline_error(mindspore_text)
    assert described.startswith("数据管道失败，在其 Decode 步骤中，处理文件 /data/bad.png 时：")
    assert "map operation: [Decode] failed" in described  # MindData's own words stay as MindData wrote them
    assert "修正：/data/bad.png 不是可读的图像" in described
    assert described.endswith("（--resume 会从最后一个 checkpoint 继续）。")

    def fails(argv):
        raise ValueError("bad")

    assert cli.run_cli(fails, []) == 1
    err = capsys.readouterr().err
    assert "错误（ValueError）：bad" in err and "（用 --debug true 或 COURSE_DEBUG=1 运行" in err


def test_lab_and_perf_errors_are_chinese(zh):
    with pytest.raises(ValueError, match=r"^depth 必须是 \[18, 34, 50, 101\] 之一，得到的是 19。修正：用 18 或 50。$"):
        build_torch_resnet(19)
    with pytest.raises(ValueError, match=r"^values 必须是非空的字典（名称 -> 数值），得到的是 \{\}。修正：例如 "
                                         r"plot_bars\(\{'graph': 1\.2"):
        plotting.plot_bars({}, "t", "s")
    with pytest.raises(TypeError, match=r"^notebook 必须是 notebook 文件名（不含扩展名），例如 '03_model_train_eval'，"
                                        r"得到的是 3。$"):
        run_seconds(3)
    fig, ax = diagrams.new_canvas(3, 2)
    with pytest.raises(ValueError, match=r"^role 必须是 .* 之一，得到的是 'nope'。$"):
        diagrams.box(ax, 0, 0, 1, 1, "x", role="nope")
    with pytest.raises(TypeError, match=r"^rows 必须是 op_time_table 给出的 OpTime 条目，得到的是 tuple。$"):
        format_op_table([("MatMul", 6)])
    with pytest.raises(ValueError, match=r"^model 必须是 \['lenet5', 'resnet18', 'resnet50'\] 之一，得到的是 'vgg16'。"
                                         r"修正：例如传入 model='lenet5'。$"):
        time_step_in_subprocess(model="vgg16")
    with pytest.raises(ValueError, match=r"(Fix: |修正：)传入以英寸为单位的尺寸，例如 6"):
        diagrams.new_canvas(0, 2)


def test_lesson_helpers_translate_their_own_words_but_not_other_libraries(zh, tmp_path, capsys):
    assert run_time("04_x", tmp_path / "missing.json") == "04_x 的运行时间：尚未测量（运行 `make bench-notebooks`）。"
    with show_error(ValueError):  # what another library raised is shown as it is
        raise ValueError("For 'Conv2D', the 'in_channels' must be 3, but got 1.")
    assert capsys.readouterr().out.strip() == "ValueError: For 'Conv2D', the 'in_channels' must be 3, but got 1."
    with pytest.raises(AssertionError, match="^这段代码本应抛出错误，但它没有出错就结束了。$"):
        with show_error():
            pass


def test_import_time_check_of_the_log_folder_is_chinese(zh):
    with pytest.raises(ValueError, match=r"^GLOG_log_dir 是 '/tmp/课程 logs'：MindSpore 2\.10 只接受"):
        course_lib._check_mindspore_log_dir({"GLOG_logtostderr": "0", "GLOG_log_dir": "/tmp/课程 logs"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        course_lib._warn_if_mindspore_came_first({"mindspore": sys})
    assert str(caught[0].message).startswith("mindspore 在 course_lib 之前被导入了")


def test_english_is_unchanged_and_the_language_can_change_back():
    set_language("zh")
    set_language("en")
    try:
        with pytest.raises(TypeError) as caught:
            launch(WORKER, echo="yes")
        assert str(caught.value) == "echo must be True or False, got 'yes'."
        with pytest.raises(TypeError, match=r"^Config key 'epochs' must be an int like its default 5, got 'three' "
                                            r"\(str\) \(from keyword overrides\)\. Fix the value"):
            load_config(epochs="three")
    finally:
        set_language(None)


def _fields(text):
    return {(name, conversion, spec) for _, name, spec, conversion in string.Formatter().parse(text)
            if name is not None}


def test_every_message_of_these_packages_has_chinese_with_the_same_placeholders():
    """Every _("...") message of parallel/migrate/run/lab/perf has a Chinese text in the catalog that fills in
    with the same values (no placeholder the code does not pass; {article}/{verb} are English grammar only)."""
    with i18n.CATALOG.open("rb") as handle:
        catalog = read_po(handle, locale="zh_CN")
    ours = [m for m in catalog if m.id and any(path.startswith(PACKAGES) for path, _line in m.locations)]
    assert len(ours) > 150
    for message in ours:
        assert message.string and not message.fuzzy, message.id
        english, chinese = _fields(message.id), _fields(message.string)
        assert chinese <= english, (message.id, chinese - english)
        left_out = {name for name, _c, _s in english} - {name for name, _c, _s in chinese}
        assert left_out <= {"article", "verb"}, message.id
        if "Fix:" in message.id:
            assert "修正：" in message.string, message.id


def test_fast_conv_errors_are_chinese_with_the_values_and_english_otherwise(monkeypatch):
    """FastConv2d and the blocked layout (appendix A8) raise in Chinese outside a compiled construct."""
    from mindspore import nn

    from course_lib.perf.fast_conv import BlockedBatchNorm2d, FastConv2d, onednn_choice

    monkeypatch.setenv("FAST_CONV_ONEDNN", "bogus")
    mistakes = [(ValueError, lambda: FastConv2d(4, 4, 3, group=2)), (TypeError, lambda: BlockedBatchNorm2d(nn.ReLU())),
                (ValueError, onednn_choice)]
    expected = {
        "zh": ["FastConv2d 不支持 group=2（只支持 1）。修正：这一层使用 mindspore.nn.Conv2d。",
               "BlockedBatchNorm2d 用来替换 nn.BatchNorm2d，得到的是 ReLU。修正：传入要替换的 BatchNorm2d 层。",
               "FAST_CONV_ONEDNN 必须是 'private' 或 'mindspore'，得到的是 'bogus'。"
               "修正：取消设置它，或者设为这两个值之一。"],
        "en": ["FastConv2d does not support group=2 (only 1 is supported). "
               "Fix: use mindspore.nn.Conv2d for this layer.",
               "BlockedBatchNorm2d replaces an nn.BatchNorm2d, got ReLU. "
               "Fix: pass the BatchNorm2d layer to replace.",
               "FAST_CONV_ONEDNN must be 'private' or 'mindspore', got 'bogus'. "
               "Fix: unset it, or set one of the two."],
    }
    for language, texts in expected.items():
        set_language(language)
        try:
            for (error, mistake), text in zip(mistakes, texts, strict=True):
                with pytest.raises(error) as caught:
                    mistake()
                assert str(caught.value) == text
        finally:
            set_language(None)
