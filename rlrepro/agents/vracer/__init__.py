"""V-RACER with ReF-ER (Novati & Koumoutsakos 2019, §2, App. A, Alg. 3)."""
