"""PPO (Schulman et al. 2017), the ReF-ER paper's on-policy baseline for V-RACER (Novati & Koumoutsakos 2019, Fig. 4)."""
