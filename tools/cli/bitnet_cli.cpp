// bitnet-cli: inspect, verify, tokenize and generate with a GGUF model.
int main() { return 0; }
