"""Continuous-action ACER (Wang et al. 2017) as the ReF-ER paper's baseline (App. A)."""
