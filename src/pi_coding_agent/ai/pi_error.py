"""``PiError``: the one root of the errors this package raises on purpose.

It lives in the lowest layer so that every layer's error types (a provider's failure here, a
refused session operation in ``coding``) can derive from it, and an SDK host can catch them all
with one ``except pi_coding_agent.PiError``; defects stay plain Python exceptions.
"""


class PiError(Exception):
    """A failure this package reports on purpose: ``str(err)`` is the message for the user."""
