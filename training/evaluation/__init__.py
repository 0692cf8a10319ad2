"""GPT4Tools-style evaluation: success rates (SR_t, SR_act, SR_args, SR) of a controller on held-out cases."""
