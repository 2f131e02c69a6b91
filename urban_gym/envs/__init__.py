"""urban_gym.envs"""
