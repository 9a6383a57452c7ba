// The prefetch hint is inline, in include/OrchestraPrefetch.h.
