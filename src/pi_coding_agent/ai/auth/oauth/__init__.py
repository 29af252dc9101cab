"""Subscription sign-in (OAuth) credentials, stored in auth.json exactly as pi stores them.

``store`` (locked auth.json access, compatible with pi's lock), ``providers`` (each provider's
endpoints, refresh and request auth), ``refresh`` (refresh-when-due under the lock), ``login`` and
``flows`` (browser, device-code and pasted-URL sign-in). Nothing here is imported at start-up:
``ai.keys.AuthStorage`` loads it on the first request of a provider that has an OAuth credential.
"""
