"""history"""
