"""NAF with ReF-ER (Novati & Koumoutsakos 2019, §2 eq. 4, App. A)."""
