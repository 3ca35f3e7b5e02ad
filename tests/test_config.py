import course_lib  # noqa: F401  (sets env before mindspore)
import pytest

from course_lib.config import DEFAULT_CONFIG, Config, load_config, parse_overrides


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


@pytest.mark.parametrize("overrides, message", [
    ({"epochs": "three"}, r"'epochs' must be an int like its default 5, got 'three'"),
    ({"epochs": True}, r"'epochs' must be an int"),
    ({"lr": "fast"}, r"'lr' must be a float"),
    ({"resume": 1}, r"'resume' must be a bool"),
    ({"context_mode": "grpah"}, r"'context_mode' must be one of \['graph', 'pynative'\], got 'grpah'"),
    ({"model": "vgg"}, r"'model' must be one of"),
    ({"batchsize": 3}, r"Unknown config key\(s\) \['batchsize'\]"),
    ({"data_path": 3}, r"'data_path' must be null or a str"),
    ({"num_parallel_workers": "2"}, r"'num_parallel_workers' must be null or an int"),
])
def test_bad_values_are_rejected_with_the_key_and_value(overrides, message):
    with pytest.raises(ValueError, match=message):
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
