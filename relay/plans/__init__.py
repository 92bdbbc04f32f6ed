"""Approved plans: a reviewed plan's scope, derived by relay, held by the Decider."""
