/// Where retry jitter draws its random numbers: the system generator, or a seeded one so a
/// run (a test, a simulation) can be replayed exactly.
///
/// A source is shared by every call that uses it and is safe to use from many tasks; a seeded
/// source gives the same draws for the same sequence of calls.
public final class RandomSource: Sendable {
    private let generator: Locked<SplitMix64>?

    private init(seed: UInt64?) {
        generator = seed.map { Locked(SplitMix64(seed: $0)) }
    }

    /// Draws from `SystemRandomNumberGenerator`.
    public static let system = RandomSource(seed: nil)

    /// A deterministic source: the same seed gives the same draws.
    public static func seeded(_ seed: UInt64) -> RandomSource {
        RandomSource(seed: seed)
    }

    /// A uniformly distributed value in `0 ..< 1`.
    public func nextUnitInterval() -> Double {
        if let generator {
            return generator.withLock { Double.random(in: 0..<1, using: &$0) }
        }
        return Double.random(in: 0..<1)
    }
}

/// A small, fast, seedable generator (Steele, Lea and Flood's SplitMix64). Also used by the
/// benchmarks to build the same graphs in every run (`@_spi(Simulation) import Orchestra`).
@_spi(Simulation)
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose draws are fixed by `seed`.
    public init(seed: UInt64) {
        state = seed
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
