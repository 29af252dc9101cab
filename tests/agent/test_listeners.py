"""Typed subscriptions: an event reaches the listeners of its type and the untyped ones, in order."""

from pi_coding_agent.agent.listeners import Listeners


def test_an_event_reaches_its_type_and_the_untyped_listeners_in_subscription_order():
    listeners: Listeners[str] = Listeners()
    listeners.add("all-1")
    listeners.add("ends", ("message_end", "agent_end"))
    listeners.add("all-2")
    assert listeners.for_type("message_update") == ("all-1", "all-2")
    assert listeners.for_type("agent_end") == ("all-1", "ends", "all-2")


def test_unsubscribing_drops_the_cached_route_and_a_second_call_does_nothing():
    listeners: Listeners[str] = Listeners()
    remove = listeners.add("ends", ("message_end",))
    listeners.add("ends", ("message_end",))  # the same listener twice is two subscriptions
    assert listeners.for_type("message_end") == ("ends", "ends")
    remove()
    remove()
    assert listeners.for_type("message_end") == ("ends",)
    late = listeners.add("late")
    assert listeners.for_type("message_end") == ("ends", "late")
    late()
    assert listeners.for_type("message_end") == ("ends",)
