"""urban_gym.baselines"""
