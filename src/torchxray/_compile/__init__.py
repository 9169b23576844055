"""Compile readiness (`torchxray.compile`): where torch.compile breaks and torch.export fails."""
