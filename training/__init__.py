"""Training: LoRA SFT and preference training on the dataset (issue: training)."""
