"""Context compaction and branch summaries: what to summarise, the summary request, and when to run.

Import the submodules directly (``coding.compaction.controller`` etc.); this package module stays
empty so that importing one part does not pull in the others.
"""
