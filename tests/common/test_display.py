"""The workbook's one display convention: percent, α/β, ordered colours, readable ticks."""

import pandas as pd
import pytest

from arrank.common import display


def test_percent_table_shows_metrics_in_percent_and_keeps_the_rest():
    frame = pd.DataFrame(
        {
            "cvr": [0.0433],
            "ndcg": [0.97951],
            "recall@1": [0.3633],
            "train_recall@1": [0.9],
            "n_queries": [300],
            "final_loss": [0.123],
        },
        index=["run"],
    )
    shown = display.percent_table(frame)
    assert list(shown.columns) == ["CVR (%)", "nDCG (%)", "R@1 (%)", "training R@1 (%)", "n_queries", "final_loss"]
    assert shown.iloc[0].tolist() == [4.33, 97.95, 36.33, 90.0, 300, 0.123]
    assert frame.loc["run", "cvr"] == 0.0433  # the input (what results.json and the CSVs hold) is untouched


def test_which_metrics_are_percent_and_their_titles():
    assert all(
        display.is_percent_metric(m)
        for m in (
            "cvr",
            "recall@10",
            "beam_recall@5_gold",
            "greedy_valid_rate",
            "beam_invalid_rate_unconstrained",
            "retrieval_recall@3",
        )
    )
    assert not any(display.is_percent_metric(m) for m in ("learning_rate", "n_queries@1", "final_loss", "recall@1-5"))
    assert display.metric_title("greedy_top1_rate") == "greedy_top1_rate (%)"
    assert display.percent_series({"greedy_valid_rate": 0.9, "n_decoded": 30}).to_dict() == {
        "greedy_valid_rate (%)": 90.0,
        "n_decoded": 30,
    }
    assert display.percent_text([0.97561, None, 1]) == "97.6 n/a 100.0"


def test_greek_and_number_text():
    assert display.greek("DE n=8 alpha=5, beta 2; alphabet") == "DE n=8 α=5, β 2; alphabet"
    assert display.number_text(2.0) == "2" and display.number_text(0.5) == "0.5" and display.number_text(True) == "true"
    assert display.number_text(3) == "3" and display.number_text("cosine") == "cosine"  # not a float: as it is


def test_ordered_colours_follow_the_parameter_order():
    from plotly.colors import unlabel_rgb

    colors = display.ordered_colors([5, 0, 2, 2], "Blues")
    assert list(colors) == [0, 2, 5]
    reds = [unlabel_rgb(colors[v])[0] for v in (0, 2, 5)]
    assert reds[0] > reds[1] > reds[2]  # light to dark as the value grows
    assert display.ordered_colors([]) == {} and len(display.ordered_colors([3])) == 1


def test_scientific_axis():
    import plotly.graph_objects as go

    fig = display.scientific_axis(go.Figure(), "yaxis2")
    assert fig.layout.yaxis2.tickformat == ".1e"
    with pytest.raises(ValueError):
        display.scientific_axis(go.Figure(), "no_such_axis")


def test_log_axis_labels_1_2_5_ticks_over_the_range():
    import plotly.graph_objects as go

    fig = display.log_axis(go.Figure(), [0.35, 2.4, 1.0])
    assert list(fig.layout.yaxis.tickvals) == [0.2, 0.5, 1.0, 2.0, 5.0] and fig.layout.yaxis.type == "log"
    assert list(fig.layout.yaxis.ticktext) == ["0.2", "0.5", "1", "2", "5"]
    assert display.log_axis(go.Figure(), [0, None]).layout.yaxis.type is None  # nothing positive: left alone


def test_percent_numbers_keep_their_digits_and_missing_values_read_n_a():
    assert display.percent_text([0.5, 0.123456, float("nan")], digits=2) == "50.00 12.35 n/a"
    assert display.percent_text((0.25, 1.0), sep=" to ") == "25.0 to 100.0"  # an interval
    assert display.percent_series({"cvr": 0.123456}).to_dict() == {"CVR (%)": 12.35}
    assert display.percent(pd.NA) is pd.NA and display.percent(None) is None


def test_a_value_in_an_error_message_is_cut_after_80_characters_with_its_length():
    assert display.shown("x" * 78) == "'" + "x" * 78 + "'"  # 80 characters: whole
    assert display.shown("x" * 79) == "'" + "x" * 79 + "... (81 characters)"
    assert display.shown("x" * 9998).endswith("x... (10,000 characters)")
