"""Hook executors, one small class per hook type behind the HookExecutor interface."""
