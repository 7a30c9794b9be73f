// Package functions holds nothing but the guard of what the Lambda functions
// ship: each function is a command in a folder below (main.go wires
// configuration and starts the runtime), and its test keeps their
// dependencies inside internal/ and pkg/.
package functions
