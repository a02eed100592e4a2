package main

// ward's own check for the dialects: the sum of two numbers, the arguments' count.
import (
	"fmt"
	"os"
)

func main() {
	var a, b int64
	if _, err := fmt.Scan(&a, &b); err != nil {
		os.Exit(2)
	}
	fmt.Printf("sum %d args %d\n", a+b, len(os.Args)-1)
}
