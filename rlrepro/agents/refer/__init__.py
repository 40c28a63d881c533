"""ReF-ER (Novati & Koumoutsakos 2019): the episode replay memory and the host-side rule state shared by its agents."""
