#ifndef ORCHESTRA_PREFETCH_H
#define ORCHESTRA_PREFETCH_H

/// Asks the processor to bring the cache line at `address` closer, without waiting for it and
/// without faulting (any address, null included, is allowed).
static inline void orchestra_prefetch(const void *address) {
    __builtin_prefetch(address);
}

#endif
