"""notices: what a run tells its user is printed each time and recorded once, in the order first told,
until the next run's record starts."""

from arrank.common import notices


def test_notices_are_printed_each_time_kept_once_in_order_and_forgotten_by_the_next_run(capsys):
    for message in ("zeta: a fallback", "alpha: set aside", "zeta: a fallback"):
        notices.notice(message)
    assert capsys.readouterr().out == "zeta: a fallback\nalpha: set aside\nzeta: a fallback\n"
    assert notices.told() == ["zeta: a fallback", "alpha: set aside"]
    notices.forget()
    assert notices.told() == []
