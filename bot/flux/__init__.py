"""What Flux applies, who owns each object, the evaluation paths, decryption, what is stateful."""
