#if canImport(os)
import os
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Android)
import Android
#endif

/// The project's one lock: a value of type `State` that is only reachable while a lock is held.
///
/// It wraps `os_unfair_lock` on Darwin and `pthread_mutex_t` elsewhere. We do not use
/// `Synchronization.Mutex`: on Linux it produced false "access race" reports under
/// ThreadSanitizer, and it needs iOS 18.
///
/// Rule: never resume a continuation, cancel a task or call user code inside ``withLock(_:)``;
/// return what must be done and do it after the lock is released.
///
/// Give it a state with storage: a `Locked<Void>` drew ThreadSanitizer "access race" reports
/// on Linux (its zero-sized state has no address of its own), reproduced every time with
/// `orchestra run -v` writing 40 blocks at once; a counter does not.
///
/// `Sendable` only when `State` is (as `NIOLockedValueBox`): the lock serialises access to the
/// state, but a non-`Sendable` state (a class, a closure) could still escape through
/// ``withLock(_:)``'s result and be used from two threads.
@usableFromInline
package final class Locked<State> {
    #if canImport(os)
    @usableFromInline let lock: UnsafeMutablePointer<os_unfair_lock>
    #else
    @usableFromInline let lock: UnsafeMutablePointer<pthread_mutex_t>
    #endif
    // The mutex already serialises every access; the runtime exclusivity check would only add
    // cost on the hottest path of every primitive. Internal (`@usableFromInline`, not private)
    // only so that `withLock` can be `@inlinable` and specialised in the caller's module (the
    // batch streams need it): nothing but `withLock` may touch it.
    @usableFromInline @exclusivity(unchecked) var _state: State

    @usableFromInline
    package init(_ initial: State) {
        self._state = initial
        #if canImport(os)
        lock = .allocate(capacity: 1)
        lock.initialize(to: os_unfair_lock())
        #else
        lock = .allocate(capacity: 1)
        lock.initialize(to: pthread_mutex_t())
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        #if DEBUG
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ERRORCHECK))
        #endif
        let result = pthread_mutex_init(lock, &attributes)
        precondition(result == 0, "Locked: pthread_mutex_init failed with \(result)")
        pthread_mutexattr_destroy(&attributes)
        #endif
    }

    deinit {
        #if !canImport(os)
        pthread_mutex_destroy(lock)
        #endif
        lock.deinitialize(count: 1)
        lock.deallocate()
    }

    /// Runs `body` with exclusive access to the state.
    @inlinable
    package func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lockRaw()
        defer { unlockRaw() }
        return try body(&_state)
    }

    @inlinable
    func lockRaw() {
        #if canImport(os)
        os_unfair_lock_lock(lock)
        #else
        let result = pthread_mutex_lock(lock)
        assert(result == 0, "Locked: pthread_mutex_lock failed with \(result)")
        #endif
    }

    @inlinable
    func unlockRaw() {
        #if canImport(os)
        os_unfair_lock_unlock(lock)
        #else
        let result = pthread_mutex_unlock(lock)
        assert(result == 0, "Locked: pthread_mutex_unlock failed with \(result)")
        #endif
    }
}

// The mutex serialises every access to `_state`.
extension Locked: @unchecked Sendable where State: Sendable {}
