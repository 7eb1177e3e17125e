// Package golden holds tests to their golden files and to the documents
// that quote what the code produces: a golden file is rewritten by a
// test's -update flag after a deliberate change, and a worked example in
// docs/ must contain the bytes the encoder writes now. Only tests import
// it.
package golden
