"""A provider registered as one object: ``register_provider(Provider(...))``.

    ACME_URL=https://llm.acme.example/v1 ACME_KEY=acme-basic-... \\
        pi -e examples/extensions/provider_object.py --list-models acme

``Provider`` (``pi_coding_agent.coding.extensions.providers``) is pi-ai's ``Provider`` in Python:
the endpoint and models as data, the behaviour (``stream``, ``oauth``, ``refresh_models``,
``filter_models``) as functions. ``filter_models(models, credential)`` decides which models are
available (``get_available_models``, ``--list-models``, the start-up default) given the provider's
stored auth.json credential (None when the key comes from elsewhere): here a key of the basic plan,
saved with ``/login acme``, does not offer the large model.
"""

import os

from pi_coding_agent.coding.extensions.providers import Provider


def plan_models(models, credential):
    basic = credential is not None and str(credential.get("key", "")).startswith("acme-basic-")
    return [m for m in models if not (basic and m["id"] == "acme-max")]


def setup(pi):
    pi.register_provider(Provider(
        id="acme",
        name="Acme",
        base_url=os.environ.get("ACME_URL", "https://llm.acme.example/v1"),
        api="openai-completions",
        api_key="$ACME_KEY",
        models=[{"id": "acme-mini", "name": "Acme Mini", "contextWindow": 32000, "maxTokens": 4096},
                {"id": "acme-max", "name": "Acme Max", "contextWindow": 200000, "maxTokens": 16384}],
        filter_models=plan_models,
    ))
