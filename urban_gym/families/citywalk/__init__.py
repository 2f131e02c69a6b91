"""CityWalk: a continuous real-scale city with a five-level task ladder (after
UrbanGround).
"""
