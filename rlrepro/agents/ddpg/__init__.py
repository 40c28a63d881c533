"""DDPG with ReF-ER (Novati & Koumoutsakos 2019, §2, App. A, Alg. 4)."""
