"""Hook engine: settings sources under a security policy, programmatic hooks, executors, ordered and observable execution."""
