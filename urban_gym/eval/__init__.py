"""urban_gym.eval"""
