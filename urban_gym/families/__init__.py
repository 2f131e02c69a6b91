"""The environment families of urban_gym, one package each."""
