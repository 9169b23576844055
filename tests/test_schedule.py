"""The Explorer's schedule (`_view/schedule.py`): each transition of the deferred states, the
first probe's wait, and the probe left pending for the background, without a widget or kernel."""

from __future__ import annotations

import threading
import time

from torchxray._view.host import DEFERRED
from torchxray._view.schedule import HELD, SENT, WAITING, Schedule

STATES = frozenset({"tree", "selected", "overview", "probe", "history"})


def test_outside_a_kernel_everything_goes_out_at_once() -> None:
    s = Schedule()
    assert s.phase == SENT and not s.waiting
    assert s.outgoing(STATES) == (STATES, False)
    assert s.first_probe_may_start()  # nothing to wait for: returns at once


def test_held_while_built_then_sent_with_the_next_sync_once() -> None:
    s = Schedule(defer_view=True)
    assert s.phase == HELD and s.waiting
    assert s.outgoing(STATES) == (STATES - DEFERRED, False)  # __init__'s own sync
    s.built()
    assert s.phase == WAITING
    assert s.outgoing(frozenset()) == (DEFERRED, True)  # _ipython_display_'s flush
    assert s.phase == SENT and not s.waiting
    s.sent()
    assert s.outgoing(frozenset({"probe"})) == (frozenset({"probe"}), False)  # not again
    s.built()  # a late call changes nothing once sent
    assert s.phase == SENT


def test_a_failed_push_sends_the_deferred_states_again() -> None:
    s = Schedule(defer_view=True)
    s.built()
    assert s.outgoing(frozenset())[1]
    s.unsent()  # the walk was interrupted
    assert s.waiting and s.outgoing(frozenset({"history"})) == (
        DEFERRED | {"history"},
        True,
    )


def test_the_first_probe_waits_for_the_tree_and_the_view_at_most_its_delay() -> None:
    s = Schedule(defer_view=True, first_probe_delay=0.2)
    t0 = time.perf_counter()
    assert s.first_probe_may_start()  # neither came: each wait ends after the delay
    assert 0.35 <= time.perf_counter() - t0 < 2

    s = Schedule(defer_view=True, first_probe_delay=30)
    s.built()
    s.outgoing(frozenset())
    s.sent()
    threading.Timer(0.05, s.view_drew).start()
    t0 = time.perf_counter()
    assert s.first_probe_may_start()
    assert time.perf_counter() - t0 < 5


def test_release_ends_the_wait_and_close_stops_the_first_probe() -> None:
    s = Schedule(defer_view=True, first_probe_delay=30)
    s.release()  # ex.wait(): the report is needed now
    t0 = time.perf_counter()
    assert s.first_probe_may_start() and time.perf_counter() - t0 < 5

    s = Schedule(first_probe_delay=30)
    s.close()
    assert s.closing and not s.first_probe_may_start()


def test_a_probe_asked_for_while_answering_in_the_background_is_left_pending() -> None:
    s = Schedule()
    assert not s.ask() and not s.pending  # synchronous: the caller probes now
    with s.answering(True):
        assert s.background and s.ask()
    assert not s.background and s.pending
    assert s.take_pending() and not s.pending and not s.take_pending()
    with s.answering(False):
        assert not s.ask()
    assert not s.take_pending()


def test_cancel_sets_the_running_probes_token_only() -> None:
    s = Schedule()
    assert not s.cancel()  # nothing runs
    with s.running() as token:
        assert not token.is_set and s.cancel() and token.is_set
    assert not s.cancel()  # it ended: the next probe gets a fresh token
    with s.running() as token:
        assert not token.is_set
