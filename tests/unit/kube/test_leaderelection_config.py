"""The elector's settings are checked up front, with messages naming the bad value."""

from __future__ import annotations

import pytest

from computedomain.kube.leaderelection import LeaderElector, micro_time


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"lease_duration": 10, "renew_deadline": 10}, "must exceed renew_deadline"),
        ({"renew_deadline": 2, "retry_period": 2}, "x retry_period"),
        ({"retry_period": 0}, "positive"),
        ({"identity": ""}, "identity"),
    ],
    ids=["lease<=renew", "renew<=jitter*retry", "zero", "no-identity"],
)
def test_invalid_settings_are_refused(kwargs: dict[str, object], fragment: str) -> None:
    settings: dict[str, object] = {"lease_name": "l", "namespace": "n", "identity": "me"}
    settings.update(kwargs)
    with pytest.raises(ValueError, match=fragment):
        LeaderElector(object(), **settings)  # type: ignore[arg-type]


def test_micro_time_is_utc_with_microseconds() -> None:
    assert micro_time(1.5) == "1970-01-01T00:00:01.500000Z"
