package machine

// DecodeListText is the candidate on jsontext, for the benchmarks of the
// package machine_test.
var DecodeListText = decodeListText
