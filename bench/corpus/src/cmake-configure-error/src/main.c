/* main.c */
int main_placeholder(void) { return 0; }
