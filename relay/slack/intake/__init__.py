"""What comes in from Slack: the Bolt app's listeners, a click parsed and claimed
(``clicks``, ``voting``), who may answer (``people``), which installation it is from."""
