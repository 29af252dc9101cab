"""The ``codemode`` tool: model-written JavaScript, run in a QuickJS worker, calling the other tools.

``activation`` turns it on; ``tool`` is the tool; ``sandbox``/``worker`` run scripts; ``host`` and
``scope`` give scripts the session's tools; ``declarations`` tells the model what it can call.
"""
