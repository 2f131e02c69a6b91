"""urban_gym.render"""
