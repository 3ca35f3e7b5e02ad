import pytest

import course_lib  # noqa: F401  (sets env before mindspore)
from course_lib.run.config import DEFAULT_CONFIG, Config, load_config, parse_overrides


def test_defaults_match_the_packaged_yaml():
    cfg = load_config()
    assert cfg.seed == 1 and cfg.context_mode == "graph" and cfg.device_target is None
    assert cfg.batch_size == 32 and isinstance(cfg.lr, float)
    assert DEFAULT_CONFIG.is_file()


def test_user_yaml_then_argv_then_keywords(tmp_path):
    user = tmp_path / "run.yaml"
    user.write_text("epochs: 7\nlr: 0.5\ncontext_mode: pynative\n")
    cfg = load_config(user, argv=["--epochs", "9", "--batch_size=8"], lr=0.25)
    assert (cfg.epochs, cfg.batch_size, cfg.lr, cfg.context_mode) == (9, 8, 0.25, "pynative")


def test_argv_config_flag_and_bare_resume(tmp_path):
    user = tmp_path / "run.yaml"
    user.write_text("model: resnet18\n")
    cfg = load_config(argv=["--config", str(user), "--resume", "--data-path", "/x"])
    assert cfg.model == "resnet18" and cfg.resume is True and cfg.data_path == "/x"


def test_int_is_accepted_for_float_keys_and_attribute_access():
    cfg = load_config(lr=1)
    assert cfg.lr == 1.0 and isinstance(cfg.lr, float)
    cfg.epochs = 2
    assert cfg.to_dict()["epochs"] == 2 and "epochs" in cfg and cfg.get("nope", 3) == 3
    with pytest.raises(AttributeError, match="Known keys"):
        _ = cfg.not_a_key


def test_repr_is_yaml():
    assert "seed: 1" in repr(load_config())
    assert Config({"a": 1}) == Config({"a": 1})


# One vocabulary (issue 26): a value of the wrong type is a TypeError, a bad value of the right type a ValueError.
@pytest.mark.parametrize("overrides, error, message", [
    ({"epochs": "three"}, TypeError, r"'epochs' must be an int like its default 5, got 'three'"),
    ({"epochs": True}, TypeError, r"'epochs' must be an int"),
    ({"lr": "fast"}, TypeError, r"'lr' must be a float"),
    ({"resume": 1}, TypeError, r"'resume' must be a bool"),
    ({"context_mode": "grpah"}, ValueError, r"'context_mode' must be one of \['graph', 'pynative'\], got 'grpah'"),
    ({"model": "vgg"}, ValueError, r"'model' must be one of"),
    ({"batchsize": 3}, ValueError, r"Unknown config key\(s\) \['batchsize'\]"),
    ({"data_path": 3}, TypeError, r"'data_path' must be null or a str"),
    ({"num_parallel_workers": "2"}, TypeError, r"'num_parallel_workers' must be null or an int"),
    ({"epochs": 0}, ValueError, r"'epochs' \(from keyword overrides\) must be an integer >= 1"),
])
def test_bad_values_are_rejected_with_the_key_and_value(overrides, error, message):
    with pytest.raises(error, match=message):
        load_config(**overrides)


def test_yaml_that_is_not_a_mapping(tmp_path):
    bad = tmp_path / "list.yaml"
    bad.write_text("- 1\n- 2\n")
    with pytest.raises(ValueError, match="must hold a mapping"):
        load_config(bad)


def test_invalid_yaml_and_missing_file(tmp_path):
    bad = tmp_path / "broken.yaml"
    bad.write_text("epochs: [1,\n")
    with pytest.raises(ValueError, match="not valid YAML"):
        load_config(bad)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_config(tmp_path / "missing.yaml")


def test_unknown_key_in_yaml_names_the_file(tmp_path):
    bad = tmp_path / "typo.yaml"
    bad.write_text("epoch: 3\n")
    with pytest.raises(ValueError, match=r"Unknown config key\(s\) \['epoch'\] \(from .*typo.yaml\)"):
        load_config(bad)


def test_yaml_is_loaded_safely(tmp_path):
    evil = tmp_path / "evil.yaml"
    evil.write_text("seed: !!python/object/apply:os.system ['echo hacked']\n")
    with pytest.raises(ValueError, match="not valid YAML"):
        load_config(evil)


def test_empty_yaml_means_defaults(tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert load_config(empty) == load_config()


@pytest.mark.parametrize("argv, message", [
    (["epochs", "3"], "Unexpected command-line argument 'epochs'"),
    (["--epochs"], "needs a value"),
])
def test_bad_command_lines(argv, message):
    with pytest.raises(ValueError, match=message):
        parse_overrides(argv)


def test_command_line_numbers_in_exponent_form():
    cfg = load_config(argv=["--weight_decay", "1e-4", "--lr", "5e-3", "--epochs", "3"])
    assert cfg.weight_decay == 1e-4 and cfg.lr == 5e-3 and cfg.epochs == 3


# --------------------------------------------------------------------------------------- duplicate keys
@pytest.mark.parametrize("text, key, lines", [
    ("lr: 0.1\nepochs: 2\nlr: 0.5\n", "lr", (1, 3)),
    ("epochs: 2\n'epochs': 3\n", "epochs", (1, 2)),  # quoted or not, it is the same key
    ("# a comment\nbatch_size: 8\n\n\nbatch_size: 8\n", "batch_size", (2, 5)),  # even with the same value
    ("model: lenet5\nextra:\n  depth: 1\n  depth: 2\n", "depth", (3, 4)),  # a nested mapping too
    ("{lr: 0.1, lr: 0.2}\n", "lr", (1, 1)),  # flow style
])
def test_a_key_written_twice_is_an_error_naming_it_and_both_lines(tmp_path, text, key, lines):
    path = tmp_path / "run.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=rf"sets key '{key}' twice \(lines {lines[0]} and {lines[1]}\).*Fix: keep "
                                         rf"one '{key}' line"):
        load_config(path)


def test_the_same_key_in_two_different_mappings_is_not_a_duplicate():
    from course_lib.run.config import _safe_load_unique

    assert _safe_load_unique("a: {x: 1}\nb: {x: 2}\n") == {"a": {"x": 1}, "b": {"x": 2}}
    assert _safe_load_unique("base: &b {x: 1}\nc:\n  <<: *b\n  y: 2\n")["c"] == {"x": 1, "y": 2}


# ----------------------------------------------------------------------------- all_reduce_fusion_config
@pytest.mark.parametrize("value, message", [
    ([[85, 160]], "must be a flat list of ints, got a nested list"),
    ([85, [160]], "nested list"),
    ([85.0, 160], "must hold whole numbers only, got 85.0"),
    (["85", 160], "whole numbers only, got '85'"),
    ([True, 3], "whole numbers only, got True"),
    ([160, 85], "must be strictly increasing, got 160 then 85"),
    ([85, 85], "strictly increasing, got 85 then 85"),
    ([0, 5], "indices must be >= 1, got 0"),
    ([-3], ">= 1, got -3"),
    ("85,160", "must be a list of gradient indices, got '85,160'"),
    ({"a": 1}, "must be a list of gradient indices"),
])
def test_all_reduce_fusion_config_refuses_what_mindspore_cannot_use(tmp_path, value, message):
    with pytest.raises(ValueError, match=r"all_reduce_fusion_config.*" + message.replace("[", r"\[")
                       .replace("(", r"\(") + r".*Fix: .*flat list of increasing gradient indices"):
        load_config(all_reduce_fusion_config=value)
    if isinstance(value, list):
        path = tmp_path / "run.yaml"
        path.write_text(f"all_reduce_fusion_config: {value!r}\n".replace("True", "true"))
        with pytest.raises(ValueError, match=r"Config key 'all_reduce_fusion_config' \(from .*run.yaml\)"):
            load_config(path)


def test_all_reduce_fusion_config_accepts_increasing_ints():
    import numpy as np

    assert load_config(all_reduce_fusion_config=[85, 160]).all_reduce_fusion_config == [85, 160]
    assert load_config(all_reduce_fusion_config=(np.int64(3), 7)).all_reduce_fusion_config == [3, 7]
    assert load_config(argv=["--all_reduce_fusion_config", "[2, 4]"]).all_reduce_fusion_config == [2, 4]
    assert load_config().all_reduce_fusion_config is None
