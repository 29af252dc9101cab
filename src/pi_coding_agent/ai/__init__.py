"""The LLM layer: one call, ``ai.stream.stream(model, context, options)``, for every provider.

What lives where:

* the call and its vocabulary, at this root: ``types`` (messages, content, usage, models),
  ``stream`` (the entry point and ``StreamOptions``), ``transform`` (make a transcript safe for one
  model), ``thinking`` (levels, budgets, the output-token cap), ``cost``, ``errors`` (what a failed
  reply means), ``abort``, ``records``, ``identity`` (headers that name this program);
* ``apis/``: one module per wire API (``model["api"]``), loaded on first use;
* ``transport/``: the HTTP client and server-sent events those modules share;
* ``auth/``: API keys, OAuth sign-in, cloud credentials;
* ``models/``: the catalog, ``models.json``, the models store, model resolution;
* ``providers/``: vendor objects, what a vendor adds to keys, catalog and sign-in (Radius, llama.cpp);
* ``nonchat/``: classifier and image models.

Nothing here imports the agent core or the coding agent.
"""
