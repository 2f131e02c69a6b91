"""Ray RLlib's PPO trains on a registered id through the env registry (one iteration with
a local ``ray.init()``)."""

import numpy as np
import pytest

pytest.importorskip("ray.rllib")


def test_flat_rl_env_is_one_box_with_the_goal():
    from urban_gym.baselines.rllib import make_flat_rl_env

    env = make_flat_rl_env(
        "UrbanGym/StreetGraph-v0",
        {"suite": "procedural:blocks=2x2,cities=2", "observation": "symbolic", "goal": "vector"},
    )
    obs, _ = env.reset(seed=0)
    # bearings (D) and heading as sin/cos, the mask (D + 1), the 8-entry goal vector
    d = env.unwrapped.max_degree
    assert obs.shape == (2 * d + 2 + d + 1 + 8,) and env.observation_space.contains(obs)
    assert np.all(np.abs(obs) <= 1.0 + 1e-6)


@pytest.mark.slow
def test_rllib_ppo_one_iteration_on_a_registered_id():
    import ray

    from urban_gym.baselines.rllib import ppo_config

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        algo = ppo_config(
            "UrbanGym/StreetGraph-v0",
            {
                "suite": "procedural:blocks=2x2-3x3,cities=4",
                "observation": "symbolic",
                "goal": "vector",
                "max_degree": 8,
                "max_decisions": 12,
            },
            train_batch_size=256,
            minibatch_size=64,
            num_epochs=1,
        ).build_algo()
        result = algo.train()
        algo.stop()
    finally:
        ray.shutdown()
    assert result["training_iteration"] == 1
    assert result["num_env_steps_sampled_lifetime"] >= 256
    assert result["env_runners"]["num_episodes"] > 0
