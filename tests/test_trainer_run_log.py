"""RunLog: metrics.jsonl, config.json and TensorBoard events under stable names,
resuming without duplicate steps, and errors that name the bad metric."""

from __future__ import annotations

import json
import math
import sys
import time

import pytest

from envgym.trainers.common.run_log import METRIC_NAME, STANDARD_METRICS, RunLog, read_metrics

pytest.importorskip("torch")
pytest.importorskip("tensorboard")


def tensorboard_scalars(out_dir) -> dict[str, list[tuple[int, float]]]:
    """What TensorBoard shows: ``{tag: [(step, value), ...]}`` read from the event files."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(out_dir / "tensorboard"))
    events.Reload()
    return {
        tag: [(event.step, event.value) for event in events.Scalars(tag)]
        for tag in events.Tags()["scalars"]
    }


def test_metrics_reach_jsonl_config_and_tensorboard(tmp_path):
    config = {"env_id": "envgym/GuessNumber-v0", "lr": 1e-5, "out": tmp_path}
    with RunLog(tmp_path, config=config) as run_log:
        run_log.log(1, {"charts/success_rate": 0.25, "losses/policy": -0.5})
        # Each line is on disk as soon as it is logged, before close.
        assert read_metrics(tmp_path)[0]["charts/success_rate"] == 0.25
        run_log.log(2, {"charts/success_rate": 0.75, "update/dropped_groups": 3})
    rows = read_metrics(tmp_path)
    assert [row["step"] for row in rows] == [1, 2]
    assert rows[1]["update/dropped_groups"] == 3
    assert rows[0]["time"] <= rows[1]["time"]
    assert abs(rows[0]["time"] - time.time()) < 3600
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved == {"env_id": "envgym/GuessNumber-v0", "lr": 1e-5, "out": str(tmp_path)}
    scalars = tensorboard_scalars(tmp_path)
    assert scalars["charts/success_rate"] == [(1, 0.25), (2, 0.75)]
    assert scalars["losses/policy"] == [(1, -0.5)]
    assert scalars["update/dropped_groups"] == [(2, 3.0)]


def test_resume_keeps_each_step_once(tmp_path):
    with RunLog(tmp_path) as run_log:
        for step in range(1, 5):
            run_log.log(step, {"charts/episodic_return": float(step)})
    # The run crashed after step 4; its checkpoint was at step 2.
    with RunLog(tmp_path, resume_step=2) as run_log:
        for step in (3, 4, 5):
            run_log.log(step, {"charts/episodic_return": 10.0 * step})
    rows = read_metrics(tmp_path)
    assert [(row["step"], row["charts/episodic_return"]) for row in rows] == [
        (1, 1.0),
        (2, 2.0),
        (3, 30.0),
        (4, 40.0),
        (5, 50.0),
    ]
    assert tensorboard_scalars(tmp_path)["charts/episodic_return"] == [
        (1, 1.0),
        (2, 2.0),
        (3, 30.0),
        (4, 40.0),
        (5, 50.0),
    ]


def test_a_new_run_never_appends_to_an_old_one(tmp_path):
    with RunLog(tmp_path, tensorboard=False) as run_log:
        run_log.log(1, {"charts/success_rate": 1.0})
    with pytest.raises(FileExistsError, match="resume_step"):
        RunLog(tmp_path, tensorboard=False)
    assert len(read_metrics(tmp_path)) == 1


@pytest.mark.parametrize(
    "metrics, match",
    [
        ({"charts/success_rate": math.nan}, "'charts/success_rate' is nan"),
        ({"losses/kl": math.inf}, "'losses/kl' is inf"),
        ({"success_rate": 0.5}, "'success_rate' is not section/name"),
        ({"Charts/Success": 0.5}, "'Charts/Success' is not section/name"),
        ({"charts/success_rate": "0.5"}, "'charts/success_rate' must be a number"),
        ({"charts/success_rate": True}, "'charts/success_rate' must be a number"),
    ],
)
def test_bad_metrics_say_which_key_and_write_nothing(tmp_path, metrics, match):
    with RunLog(tmp_path, tensorboard=False) as run_log:
        with pytest.raises(ValueError, match=match):
            run_log.log(1, {"time/step_s": 0.1, **metrics})
        run_log.log(2, {"time/step_s": 0.2})
    assert [row["step"] for row in read_metrics(tmp_path)] == [2]


def test_numpy_and_int_values_are_written_as_plain_numbers(tmp_path):
    np = pytest.importorskip("numpy")
    with RunLog(tmp_path, tensorboard=False) as run_log:
        run_log.log(1, {"eval/mean_return": np.float32(0.5), "update/dropped_groups": np.int64(2)})
    row = read_metrics(tmp_path)[0]
    assert row["eval/mean_return"] == 0.5 and row["update/dropped_groups"] == 2


def test_tensorboard_false_writes_no_events(tmp_path):
    with RunLog(tmp_path, tensorboard=False) as run_log:
        assert not run_log.tensorboard
        run_log.log(1, {"charts/success_rate": 0.5})
    assert not (tmp_path / "tensorboard").exists()
    assert read_metrics(tmp_path)[0]["charts/success_rate"] == 0.5


def test_missing_tensorboard_is_an_error_only_when_asked_for(tmp_path, monkeypatch):
    # A None entry in sys.modules makes the import fail, as if not installed.
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    with pytest.raises(ImportError, match="pip install tensorboard"):
        RunLog(tmp_path / "asked", tensorboard=True)
    with pytest.warns(UserWarning, match="pip install tensorboard"):
        run_log = RunLog(tmp_path / "default")
    with run_log:
        run_log.log(1, {"charts/success_rate": 0.5})
    assert read_metrics(tmp_path / "default")[0]["step"] == 1
    assert not (tmp_path / "default" / "tensorboard").exists()


def test_a_line_torn_by_a_crash_is_skipped(tmp_path):
    with RunLog(tmp_path, tensorboard=False) as run_log:
        run_log.log(1, {"charts/success_rate": 0.5})
    with open(tmp_path / "metrics.jsonl", "a") as file:
        file.write('{"step": 2, "charts/succ')
    assert [row["step"] for row in read_metrics(tmp_path)] == [1]
    with RunLog(tmp_path, tensorboard=False, resume_step=1) as run_log:
        run_log.log(2, {"charts/success_rate": 1.0})
    assert [row["step"] for row in read_metrics(tmp_path)] == [1, 2]


def test_standard_names_are_valid_metric_names():
    assert {"charts/success_rate", "losses/policy", "time/step_s"} <= set(STANDARD_METRICS)
    assert [name for name in STANDARD_METRICS if not METRIC_NAME.match(name)] == []
