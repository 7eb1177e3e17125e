// Package quantile keeps the distribution of a stream of non-negative
// values in memory bounded by its configuration, not by the stream's
// length, and answers percentiles from it.
//
// A [Sketch] counts values in logarithmic buckets: bucket i holds the
// values in (γ^(i-1), γ^i] with γ = (1+α)/(1-α), and reports each by
// 2γ^i/(γ+1), which is within a relative error α of every value in the
// bucket. A reported percentile is therefore within α (1 %) of the exact
// nearest-rank percentile of the same values, for values of at least
// [Smallest]; values below it count as zero (an absolute error below
// Smallest). The smallest and the largest value are kept exactly, so the
// 0th and 100th percentiles are exact. Values above [Largest] are counted
// in the top bucket. The scheme is that of the paper "DDSketch: A Fast and
// Fully-Mergeable Quantile Sketch with Relative-Error Guarantees".
//
// A Sketch never holds more than [MaxBuckets] counters (about 11 KiB),
// however many values it is given; it holds only the span of buckets its
// values have reached so far.
package quantile
