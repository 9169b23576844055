"""The fake-execution engine that probes (`_probe/`) and memory traces (`_memory/`) share: the fake
mode with its kernel fixes, fake tensors made without a dispatch, the model's state put back after
a fake run, offloaded weights seen as fakes, and the memo of repeated identical blocks."""
