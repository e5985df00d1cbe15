"""The machines perflab drives: this one, hosts over SSH, devices booted from here (`base.Host`)."""
