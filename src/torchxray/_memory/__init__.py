"""Private helpers of `torchxray.memory`: the fake run that measures a step, optimizer state."""
