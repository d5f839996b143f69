"""Analysis over a trace: statistics, aggregations and comparisons of two inputs."""
