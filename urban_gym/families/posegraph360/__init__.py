"""PoseGraph360: a city captured as 360-degree video trajectories joined at junctions
(after 360CityArena).
"""
