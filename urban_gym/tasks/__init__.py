"""urban_gym.tasks"""
