"""The docs tables the schema renders: an output's ``X_std`` shares the row of ``X``, its plain
EM traces share one row, an input keeps one row per variable."""

from rankmodels.tracking.schema import FileFormat, Variable


def _format(input_: bool) -> FileFormat:
    return FileFormat(
        "demo",
        (
            Variable("speed", (), "real", "sound speed", "used", units="m s-1"),
            Variable("speed_std", (), "real", "standard error of speed", "NaN", units="m s-1"),
            Variable("loglik", ("cycle",), "real", "log-likelihood", units="1"),
            Variable("calibration_loglik", ("iteration",), "real", "pass log-likelihood"),
            Variable(
                "calibration_speed",
                ("iteration",),
                "real",
                "speed of each EM iteration",
                "trace",
                units="m s-1",
            ),  # fmt: skip
            Variable("offset", ("source",), "real", "offset", units="s"),
            Variable(
                "calibration_offset",
                ("iteration", "source"),
                "real",
                "offset of each EM iteration",
                "trace",
                units="s",
            ),  # fmt: skip
        ),
        input=input_,
    )


def test_an_output_table_folds_errors_and_traces():
    rows = _format(False).markdown_table().splitlines()[2:]
    assert rows == [
        "| `speed`, `speed_std` | () | m s-1 | sound speed; used; `speed_std`: its standard "
        "error; NaN |",
        "| `loglik` | (cycle) | 1 | log-likelihood |",
        "| `calibration_loglik` | (iteration) |  | pass log-likelihood |",
        "| `calibration_NAME` | (iteration) or (iteration, source) | NAME's | NAME of each EM "
        "iteration, for NAME = `speed`, `offset`; trace |",
        "| `offset` | (source) | s | offset |",
    ]


def test_an_input_table_keeps_a_row_per_variable():
    rows = _format(True).markdown_table().splitlines()[2:]
    assert [r.split(" | ")[0] for r in rows] == [
        "| `speed`",
        "| `speed_std`",
        "| `loglik`",
        "| `calibration_loglik`",
        "| `calibration_speed`",
        "| `offset`",
        "| `calibration_offset`",
    ]
