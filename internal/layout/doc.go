// Package layout holds the tests of the project's layout rules: what may
// import what. It has no code of its own.
package layout
