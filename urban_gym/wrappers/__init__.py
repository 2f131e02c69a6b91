"""urban_gym.wrappers"""
