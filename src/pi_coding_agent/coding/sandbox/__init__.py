"""The optional sandbox of the model's tools: policy (``policy``) and kernel enforcement (``bwrap``)."""
